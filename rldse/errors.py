"""The one error type users see: a single line naming the file, field or line at fault.

Library code raises `RldseError` for anything caused by user input; the CLI prints it
as one line and exits with status 2. Anything else is a bug and keeps its traceback.
"""


class RldseError(Exception):
    """Bad user input, described in one line (what was wrong, where, and what was expected)."""

    exit_code = 2

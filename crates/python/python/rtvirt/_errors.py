"""``rtvirt.InputError`` raised from Python code, with the same attributes as the engine's."""

from ._rtvirt import InputError


def input_error(field, message):
    """An InputError about ``field`` (an argument or key), as the engine words it."""
    error = InputError(f"field `{field}`: {message}")
    error.file, error.line, error.column, error.field, error.message = None, None, None, field, message
    return error

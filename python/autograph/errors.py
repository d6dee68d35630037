"""autograph's errors in Python, mirroring the C++ ones (include/autograph/error.h)."""


class Error(RuntimeError):
    """Something autograph could not do; the message says what, where and what to do."""


class InputError(Error, ValueError):
    """Example inputs or options that do not fit the model or autograph."""


class UnsupportedModelError(Error, ValueError):
    """A model autograph cannot take in (neither traceable nor scriptable, for instance)."""


_KINDS = {"InputError": InputError, "UnsupportedModelError": UnsupportedModelError, "Error": Error}


def translate(e: Exception) -> Exception:
    """The autograph error an op's RuntimeError / ValueError stands for (by its "autograph KIND: " prefix)."""
    message = str(e)
    for kind, cls in _KINDS.items():
        marker = f"autograph {kind}: "
        at = message.find(marker)
        if at >= 0:
            text = message[at + len(marker):].split("\nException raised from")[0].strip()
            return cls(text)
    return e

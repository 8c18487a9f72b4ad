"""The toolkit's version, in a module of its own so that the sandbox, which may not
import the package's clients, can name it (a stored state records it)."""

__version__ = "0.1.0"

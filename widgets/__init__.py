"""ipywidgets forms for the operations operators do by hand.

Each form is a small class in its own module; it takes a client, calls it, and
shows what it returns. The rules live in the client, not here.
"""

"""The ad engine: state, HTTP and demo data."""

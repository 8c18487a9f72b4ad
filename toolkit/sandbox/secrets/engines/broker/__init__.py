"""The broker engine: state, HTTP and demo data."""

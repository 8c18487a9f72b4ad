"""The database engine: state, HTTP and demo data."""

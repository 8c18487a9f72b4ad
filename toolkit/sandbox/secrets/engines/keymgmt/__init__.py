"""The keymgmt engine: state, HTTP and demo data."""

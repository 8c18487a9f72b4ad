"""Facts of the two specs that the clients and the sandbox both read.

Neither side owns them: the sandbox enforces them and the clients check
requests and build views with them, so one copy here keeps the test double
and the client from drifting apart unseen. Each table has a test that reads
the spec's own text (``tests/test_spec_tables.py``).

- :mod:`toolkit._spec.team_access`: team access levels, permission attributes,
  agent statuses (spec 000).
- :mod:`toolkit._spec.certificate_names`: a certificate role's name policy
  (spec 001 section 4.10).
"""

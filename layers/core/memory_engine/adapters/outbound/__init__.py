"""Outbound calls on a tenant's behalf: the guard that resolves and checks addresses
(:mod:`.guard`) and the HTTP transport that connects only to the addresses it vetted, within one
deadline for the whole answer (:mod:`.transport`)."""

"""The Signoff client: ask a human before an agent acts, from any Python stack."""

"""The one engine: requests, transitions (sagas), claims, launches and sessions."""

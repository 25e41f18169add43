"""The task ledger: every piece of work handed to a client is a row (who, when, which networks, which
settings version, how many games), and every uploaded game must name one."""

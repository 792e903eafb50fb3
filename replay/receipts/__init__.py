"""verdict-core run directories: attempts, run receipts, their verification, curation."""

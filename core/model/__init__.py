"""The vocabulary: enums, errors, state edges, results and small value helpers.

Imports nothing of the project outside this package, so ``storage`` may use it."""

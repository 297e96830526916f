"""The subject app's screens, one per module: consent, subject id, step, between sessions, revision, save, help."""

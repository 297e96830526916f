"""Screens of the review app, one per module."""

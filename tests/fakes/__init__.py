"""Test doubles that are part of the product's test kit: scripted model, fake servers."""

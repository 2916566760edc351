"""Automations: scheduled and triggered runs that work while nobody watches (docs/automations.md)."""

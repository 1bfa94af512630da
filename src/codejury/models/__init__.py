"""Model strings ("provider:model") to pydantic-ai models, capability profiles, prices."""

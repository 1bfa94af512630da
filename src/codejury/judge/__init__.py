"""The judge stage: deduplicate, coordinator pass, reflection, verdict rubric."""

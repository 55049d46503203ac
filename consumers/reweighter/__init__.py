"""The sampler-reweighter: turns competence and diagnoses into the next round's sampling plan."""

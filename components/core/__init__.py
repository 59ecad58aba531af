"""
Rules shared by components, services and the HTTP layer: access rule, document identity, models,
errors, text analysis, prompts. No import side effects.
"""

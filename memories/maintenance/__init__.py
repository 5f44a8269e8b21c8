"""Background work: truth maintenance, the adjudicator, the crawler, the judge,
the tasks and the worker that runs them, health and the doctor.
"""

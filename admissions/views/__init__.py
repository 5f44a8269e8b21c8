"""The console pages that show a fact's admission status (SPEC §9).

They live in the admissions app because admissions stands above memories:
the conflict page, the fact page and the queues all need the status fold,
and memories may not import it. One module per concern:

- ``queues``: the dashboard, the candidates queue with batch review, the
  challenges list;
- ``conflicts``: the conflicts queue and the side-by-side conflict page;
- ``facts``: the facts browser, the fact page and its actions, the subject
  page.
"""

"""The course machinery: what serves the notebooks, not the concepts they teach.

- :mod:`.quiz` (with :mod:`.quiz_notes` and :mod:`.quiz_notes_articles`): the articles' ten questions and
  the course's own, with an explanation for every option.
- :mod:`.exercises`: ``check(name, fn)`` for the "Write it yourself" exercises, one module of cases per concept.
- :mod:`.student`: copies of the notebooks without solutions, answer keys or outputs.
- :mod:`.tour`: ``python -m attention_from_scratch``, one checked computation per concept.
- :mod:`.bench`: the quick versions of ``benchmarks/``.
- :mod:`.examples`: the hand-built examples that a notebook and its figure share.
- :mod:`.plots`: the figures (they only draw).
"""

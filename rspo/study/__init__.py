"""The study machinery: experiments (runs by name, cached), analysis and claims, the report,
``rspo reproduce``, the lab studies. Imports :mod:`rspo.core`, never :mod:`rspo.notebook`."""

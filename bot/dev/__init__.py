"""`signoff dev` and its parts: the whole product on one machine (`bot.dev.serve`), the local
fake Slack workspace (`bot.dev.slack`, which also runs on its own: `python -m bot.dev.slack`),
its people, its page and the step log.

This package's own import loads nothing: the fake Slack on its own starts without the server
it sits beside in `signoff dev` (the tests start it a hundred times)."""

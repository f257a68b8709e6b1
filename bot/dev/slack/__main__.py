"""`python -m bot.dev.slack`: the fake Slack on its own (its options: `--help`)."""

from bot.dev.slack.fake import main

main()

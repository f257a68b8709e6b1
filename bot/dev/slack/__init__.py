"""The dev workspace's Slack: a local fake of the Web API and Socket Mode that `signoff dev`
and the tests point the bot at (`bot.slack` is the app itself)."""

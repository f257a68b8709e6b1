"""Asking people: the approval desk, policies and their rules (written and learned), routing a
call to its policy, binding what was approved to what runs, timers, pages and decision targets."""

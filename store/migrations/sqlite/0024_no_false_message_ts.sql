-- While older workers run: safe. It clears bad message references; older code reads them as before.
-- A post Slack answered `ok` without a usable ts was recorded with the ts '' or 'None': no
-- message has it. Such a record has no message, so a click on the card (or the next look-up)
-- records the real one, and the card is updated again.
UPDATE approvals SET message_ts = NULL WHERE message_ts IN ('', 'None');
UPDATE pages SET message_ts = NULL WHERE message_ts IN ('', 'None');

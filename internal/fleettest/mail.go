package fleettest

// MailRecords returns n email records of 12 fields, the shape of a mail
// search a tool returns (about 235 bytes each in msgpack), as plain Go
// data, the same for the same n.
func MailRecords(n int) []any {
	out := make([]any, n)
	for i := range out {
		out[i] = map[string]any{
			"id": int64(i), "from": "sender@example.com", "to": "team@example.com",
			"subject": "Quarterly numbers", "body": "Please find the figures attached; reply by Friday.",
			"date": "2026-01-02T03:04:05Z", "unread": i%3 == 0, "size": int64(1000 + i%977), "score": float64(i%100) / 7,
			"labels": []any{"inbox", "work"}, "thread": int64(i / 4), "folder": "INBOX",
		}
	}
	return out
}

// BigUnread counts the records of MailRecords that are unread and larger
// than 1,500 bytes, as the tests' programs do with
// (filter (fn [m] (and (:unread m) (> (:size m) 1500))) ...).
func BigUnread(recs []any) int64 {
	var n int64
	for _, r := range recs {
		if m := r.(map[string]any); m["unread"] == true && m["size"].(int64) > 1500 {
			n++
		}
	}
	return n
}

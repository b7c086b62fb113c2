// Package fakeserver is the httptest provider server the provider tests
// share: it answers scripted replies (testdata files or literal bodies,
// JSON or server-sent events) in order, records every request, and
// compares request bodies with golden files. Fixed, AddCorpus,
// CheckComplete and CheckStream are what the providers' fuzz tests share.
// It is internal test support.
package fakeserver

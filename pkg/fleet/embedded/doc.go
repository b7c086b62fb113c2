// Package embedded runs a NATS server with JetStream inside the process, for
// the fleet's "no setup" mode and for tests. It is a separate package so that
// programs importing the fleet client do not link the server (~16 MB).
//
// A Server stores JetStream data in a directory it creates (and removes on
// Close) unless Options.Dir is set. Close is idempotent and safe for
// concurrent use.
//
// Connect is the "no NATS URL configured" switch of the binaries: with a URL
// it dials it, without one it starts an embedded server and connects to it
// in-process.
package embedded

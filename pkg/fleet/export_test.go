package fleet

import "time"

// LiveCalls makes b call tools that report progress the way a worker's
// Toolbox does (sendLive), asking for progress every interval.
func LiveCalls(b *Toolbox, every time.Duration) { b.replies, b.heartbeat = newReplyMux(b.nc), every }

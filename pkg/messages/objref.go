package messages

import (
	"fmt"
	"math"
	"strings"
)

// LargeResultBytes is the size above which a tool result travels out of
// band: the tool service puts the encoded result in its results bucket
// (ToolResultBucket) and replies with a ToolResponse whose ResultRef names
// the object. Smaller results travel inline, in the reply. 256 KiB keeps
// every reply well under NATS's default 1 MiB payload.
const LargeResultBytes = 256 << 10

// ToolResultBucketPrefix starts the name of every tool service's results
// bucket.
const ToolResultBucketPrefix = "tool_results_"

// ToolResultBucket is the JetStream object store bucket in which the tool
// service named service puts its large results. One bucket per service
// lets the NATS permissions give each service write access to its own
// results only ($O.tool_results_<service>.>).
func ToolResultBucket(service string) string { return ToolResultBucketPrefix + service }

// ObjectRef names an object in a JetStream object store that holds one
// value encoded in ContentType (msgpack when empty). A reader checks that
// the object it reads has Size bytes and the Digest given.
type ObjectRef struct {
	// Bucket is the object store bucket (or, for a mission record kept
	// next to its result, StreamResults: Step.Record).
	Bucket string `msgpack:"bucket"`
	// Name is the object's name in the bucket.
	Name string `msgpack:"name"`
	// Size is the encoded value's size in bytes.
	Size int64 `msgpack:"size"`
	// Digest is the object store's digest of the bytes, "SHA-256=" and
	// the base64url (padded) SHA-256.
	Digest string `msgpack:"digest"`
	// ContentType is "" (msgpack) or ContentTypeJSON.
	ContentType string `msgpack:"content_type,omitempty"`
	// Key is the AES-256-GCM key, base64url (padded), of a sealed object
	// (a Step in BucketResults): the object holds a 12-byte nonce and the
	// sealed bytes; Size and Digest are the object's.
	Key string `msgpack:"key,omitempty"`
}

// Validate checks a reference: a bucket and name, a positive size, a
// SHA-256 digest and a known content type.
func (r *ObjectRef) Validate() error { return r.validate("object_ref") }

func (r *ObjectRef) validate(path string) error {
	switch {
	case r == nil:
		return invalidf("%s is nil", path)
	case !ValidName(r.Bucket):
		return invalidf("%s.bucket: %q is not a bucket name (letters, digits, '-', '_')", path, r.Bucket)
	case r.Name == "" || len(r.Name) > 255:
		return invalidf("%s.name: %d bytes (want 1 to 255)", path, len(r.Name))
	case r.Size <= 0:
		return invalidf("%s.size: %d (want > 0)", path, r.Size)
	case !strings.HasPrefix(r.Digest, "SHA-256="):
		return invalidf("%s.digest: %q is no SHA-256 digest (want \"SHA-256=<base64url>\")", path, r.Digest)
	}
	if err := CheckContentType(r.ContentType); err != nil {
		return invalidf("%s.content_type: %v", path, err)
	}
	return nil
}

// String names the object for errors and logs.
func (r *ObjectRef) String() string {
	return fmt.Sprintf("object %s/%s (%d bytes)", r.Bucket, r.Name, r.Size)
}

// RefKey is the one key of the map that stands for a value kept by
// reference (RefValue) in a Step's trace or an event.
const RefKey = "$object"

// RefValue is the plain-data form of a value kept by reference: a map
// with the one key RefKey holding the reference's fields. A trace keeps a
// large tool result this way, so a Step does not grow with the data its
// program read.
func RefValue(r *ObjectRef) map[string]any {
	m := map[string]any{"bucket": r.Bucket, "name": r.Name, "size": r.Size, "digest": r.Digest}
	if r.ContentType != "" {
		m["content_type"] = r.ContentType
	}
	return map[string]any{RefKey: m}
}

// RefOf reads back what RefValue wrote, after it crossed the wire as
// msgpack or JSON: the reference and true when v is a map whose one key
// is RefKey holding a bucket and name and an integral size; otherwise nil
// and false.
func RefOf(v any) (*ObjectRef, bool) {
	outer, ok := v.(map[string]any)
	if !ok || len(outer) != 1 {
		return nil, false
	}
	m, ok := outer[RefKey].(map[string]any)
	if !ok {
		return nil, false
	}
	r := &ObjectRef{}
	r.Bucket, _ = m["bucket"].(string)
	r.Name, _ = m["name"].(string)
	r.Digest, _ = m["digest"].(string)
	r.ContentType, _ = m["content_type"].(string)
	switch n := m["size"].(type) {
	case int64:
		r.Size = n
	case uint64:
		r.Size = int64(min(n, math.MaxInt64))
	case float64:
		if n != math.Trunc(n) || n < 0 || n > math.MaxInt64 {
			return nil, false
		}
		r.Size = int64(n)
	default:
		return nil, false
	}
	if r.Bucket == "" || r.Name == "" {
		return nil, false
	}
	return r, true
}

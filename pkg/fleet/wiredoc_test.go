package fleet_test

import (
	"os"
	"strings"
	"testing"

	"github.com/ptcfleet/ptc/pkg/fleet"
)

// docs/wire.md names the endpoint metadata keys, the failure reasons and
// the consumer names as pkg/fleet has them (pkg/messages checks the rest).
func TestWireDocNamesFleetConstants(t *testing.T) {
	b, err := os.ReadFile("../../docs/wire.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	for _, s := range []string{fleet.MetaTool, fleet.MetaSignature, fleet.MetaDescription, fleet.MetaContentType,
		fleet.ReasonCancelled, fleet.ReasonDeadline, fleet.ReasonTimeout, fleet.ReasonMaxDeliveries,
		fleet.ReasonRunnerError, fleet.ReasonRunnerPanic, fleet.ReasonUnsupported, fleet.ReasonInvalid, fleet.ReasonUnreadableResult,
		strings.Replace(fleet.ConsumerName("PRIORITY"), "PRIORITY", "<priority>", 1)} {
		if !strings.Contains(doc, "`"+s+"`") {
			t.Errorf("docs/wire.md does not name %q", s)
		}
	}
}

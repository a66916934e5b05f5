package vmproto

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestPrintFind: what a guest prints the host finds among the other lines of its output, the common
// part included; a marker that is not there is ErrNoBundle.
func TestPrintFind(t *testing.T) {
	var out bytes.Buffer
	out.WriteString("vmtest: insmod x failed\n")
	sent := StackBundle{Guest: Guest{Kernel: "6.1.0-40-amd64", Logs: []string{"started"}},
		Parts: map[string]*StackPart{"md": {Checks: []StackCheck{{What: "level", Want: "raid1", Got: "raid1"}}}}}
	Print(&out, MarkerStack, sent)
	out.WriteString(MarkerExit + "0\n")

	var got StackBundle
	require.NoError(t, Find(out.String(), MarkerStack, &got))
	assert.Equal(t, sent, got)
	assert.Equal(t, "6.1.0-40-amd64", got.Common().Kernel)

	var other LatencyBundle
	require.ErrorIs(t, Find(out.String(), MarkerLatency, &other), ErrNoBundle)

	// A bundle that cannot be marshalled still reaches the host, as an error.
	out.Reset()
	Print(&out, MarkerIOErr, IOErrBundle{Before: json.RawMessage("{not json")})
	var bad IOErrBundle
	require.NoError(t, Find(out.String(), MarkerIOErr, &bad))
	require.Len(t, bad.Errors, 1)
	assert.Contains(t, bad.Errors[0], "marshalling the bundle")
}

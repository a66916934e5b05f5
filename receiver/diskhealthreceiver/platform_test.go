package diskhealthreceiver

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestPlatformError(t *testing.T) {
	for _, goos := range []string{"darwin", "windows"} {
		err := platformError(goos)
		require.ErrorIs(t, err, errNotLinux, goos)
		assert.Contains(t, err.Error(), "it runs on Linux only", goos)
	}
	assert.NoError(t, platformError("linux"))
}

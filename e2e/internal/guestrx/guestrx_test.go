package guestrx

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// TestLines: an entry at or above the level becomes its message and its fields, one line each; the
// host tests search these lines for a source's warnings.
func TestLines(t *testing.T) {
	logger, logs := Observe(zapcore.WarnLevel)
	logger.Info("not kept")
	logger.Warn("Read failed.", zap.String("status", "permission_denied"))
	logger.Error("Gone.")
	assert.Equal(t, []string{"Read failed. status=permission_denied", "Gone."}, Lines(logs))
}

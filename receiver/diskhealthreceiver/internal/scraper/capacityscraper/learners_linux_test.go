package capacityscraper

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/extension/xextension/storage"

	dhtest "github.com/diskhealth/diskhealth/internal/testkit"
)

// learnerKeys names the domains s follows with a learner and those it follows with a checkpoint.Still.
func learnerKeys(s *capScraper) (learned, still []string) {
	for d := range s.learners.byKey {
		learned = append(learned, domainKey(d))
	}
	for d := range s.learners.still {
		still = append(still, domainKey(d))
	}
	return learned, still
}

// TestFSScraperLearnsWhereUsageMoves (issue 33): through the keep-after job's first two hours, when no
// domain's usage moves, no domain has a learner; the job's first save makes /data's, and only /data's,
// while every other domain stays still.
func TestFSScraperLearnsWhereUsageMoves(t *testing.T) {
	clock := t0
	s, f := bindsRootWith(t, "keep", &clock, nil, nil)
	keepAfterScrapes(t, s, f, &clock, 0, 2*time.Hour)
	learned, still := learnerKeys(s)
	assert.Empty(t, learned)
	require.Contains(t, still, dataKey)
	domains := len(still)
	require.Greater(t, domains, 1, "the binds root has domains besides /data's")

	keepAfterScrapes(t, s, f, &clock, 2*time.Hour, 2*time.Hour+10*time.Minute)
	learned, still = learnerKeys(s)
	assert.Equal(t, []string{dataKey}, learned)
	assert.Len(t, still, domains-1)
	assert.NotContains(t, still, dataKey)
}

// TestFSScraperStoresStillDomains: a domain still at shutdown is stored as every domain was when each had
// a learner (the record of the learner its samples made: TestStillIsTheLearner), and the next start
// restores it, without a word, into a learner from its first sample, as before.
func TestFSScraperStoresStillDomains(t *testing.T) {
	ext := dhtest.FileStorage(t, t.TempDir())
	t.Cleanup(func() { require.NoError(t, ext.Shutdown(context.Background())) })
	clock := t0
	s, f, _ := storedRun(t, ext, &clock, nil)
	keepAfterScrapes(t, s, f, &clock, 0, time.Hour)
	require.NoError(t, s.shutdown(t.Context()))

	client, err := ext.(storage.Extension).GetClient(t.Context(), component.KindReceiver, s.id, "checkpoint")
	require.NoError(t, err)
	record, err := client.Get(t.Context(), dataKey)
	require.NoError(t, err)
	assert.NotEmpty(t, record, "the still domain was stored")
	require.NoError(t, client.Close(t.Context()))

	s, f, logs := storedRun(t, ext, &clock, nil)
	keepAfterScrapes(t, s, f, &clock, time.Hour, time.Hour+10*time.Minute)
	assert.Empty(t, warns(logs))
	learned, _ := learnerKeys(s)
	assert.Contains(t, learned, dataKey, "restored: a learner from the first sample")
	require.NoError(t, s.shutdown(t.Context()))
}

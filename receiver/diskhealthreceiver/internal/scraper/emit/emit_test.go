package emit

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestSetIfNotEmpty(t *testing.T) {
	var got []string
	set := func(v string) { got = append(got, v) }
	SetIfNotEmpty(set, "")
	SetIfNotEmpty(set, "sda")
	assert.Equal(t, []string{"sda"}, got)
}

func TestCountErrors(t *testing.T) {
	a, b := errors.New("a"), errors.New("b")
	assert.Equal(t, 1, CountErrors(a))
	assert.Equal(t, 2, CountErrors(errors.Join(a, b)))
	assert.Equal(t, 3, CountErrors(fmt.Errorf("file: %w", errors.Join(a, b, a))))
}

// Package ascii turns the fixed-width, space-padded text fields of ATA, NVMe
// and SCSI identify pages into clean Go strings.
package ascii

import "strings"

// Clean trims the spaces and NULs devices pad their fields with and replaces
// every byte outside printable ASCII with '?'. The result is always valid
// UTF-8, which matters because these strings end up as OTLP attribute values
// and protobuf rejects invalid UTF-8 in string fields.
func Clean(b []byte) string {
	start, end := 0, len(b)
	for start < end && pad(b[start]) {
		start++
	}
	for end > start && pad(b[end-1]) {
		end--
	}
	b = b[start:end]
	clean := true
	for _, c := range b {
		if c < 0x20 || c > 0x7e {
			clean = false
			break
		}
	}
	if clean {
		return string(b)
	}
	var sb strings.Builder
	sb.Grow(len(b))
	for _, c := range b {
		if c < 0x20 || c > 0x7e {
			c = '?'
		}
		sb.WriteByte(c)
	}
	return sb.String()
}

func pad(c byte) bool { return c == ' ' || c == 0 }

package messages

import (
	"strings"
	"testing"
)

func TestCheckBounds(t *testing.T) {
	good, err := Marshal(validMission())
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		data    []byte
		wantErr string
	}{
		{"mission", good, ""},
		{"scalars", []byte{0x93, 0x01, 0xc0, 0xcb, 0, 0, 0, 0, 0, 0, 0, 0}, ""},
		{"empty", nil, "truncated"},
		{"huge array", []byte{0x81, 0xa1, 'a', 0xdd, 0x55, 0x25, 0xa8, 0x70, 0xc0}, "container of"},
		{"huge map", []byte{0xdf, 0x10, 0, 0, 0}, "container of"},
		{"huge string", []byte{0xdb, 0x7f, 0, 0, 0, 'x'}, "exceeds"},
		{"huge ext", []byte{0xc9, 0x7f, 0, 0, 0, 1}, "exceeds"},
		{"truncated array16", []byte{0xdc, 0x01}, "truncated"},
		{"invalid code", []byte{0xc1}, "invalid code"},
		{"fixext8", []byte{0xd7, 0xff, 1, 2, 3, 4, 5, 6, 7, 8}, ""},
		{"short fixext8", []byte{0xd7, 0xff, 1}, "exceeds"},
		{"nested pending", []byte{0x92, 0x92, 0x01}, "container of"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := CheckBounds(tt.data)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("CheckBounds() = %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("CheckBounds() = %v, want %q", err, tt.wantErr)
			}
		})
	}
}

func FuzzCheckBounds(f *testing.F) {
	good, _ := Marshal(validMission())
	f.Add(good)
	f.Add([]byte{0xdd, 0xff, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, data []byte) {
		if CheckBounds(data) != nil {
			return
		}
		var v any
		_ = Unmarshal(data, &v) // must not panic or allocate beyond the input's claims
	})
}

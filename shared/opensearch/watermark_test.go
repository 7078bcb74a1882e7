package opensearch

import "testing"

func TestParseWatermark(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    Watermark
		wantErr bool
	}{
		{"percentage", "90%", Watermark{UsedRatio: 0.9}, false},
		{"fractional percentage", "87.5%", Watermark{UsedRatio: 0.875}, false},
		{"surrounding spaces are trimmed", " 85% ", Watermark{UsedRatio: 0.85}, false},
		{"ratio", "0.9", Watermark{UsedRatio: 0.9}, false},
		{"ratio one", "1.0", Watermark{UsedRatio: 1}, false},
		{"zero percent", "0%", Watermark{UsedRatio: 0}, false},
		{"gigabytes", "10gb", Watermark{UsedRatio: 1, MinFreeBytes: 10 << 30}, false},
		{"upper-case unit", "500MB", Watermark{UsedRatio: 1, MinFreeBytes: 500 << 20}, false},
		{"short unit", "2g", Watermark{UsedRatio: 1, MinFreeBytes: 2 << 30}, false},
		{"fractional size", "1.5tb", Watermark{UsedRatio: 1, MinFreeBytes: 3 << 39}, false},
		{"bytes", "1048576b", Watermark{UsedRatio: 1, MinFreeBytes: 1 << 20}, false},
		{"space before unit", "10 gb", Watermark{UsedRatio: 1, MinFreeBytes: 10 << 30}, false},
		{"zero bytes", "0b", Watermark{UsedRatio: 1}, false},
		{"percentage over 100", "101%", Watermark{}, true},
		{"negative percentage", "-5%", Watermark{}, true},
		{"ratio over 1 without unit", "90", Watermark{}, true},
		{"negative size", "-10gb", Watermark{}, true},
		{"unknown unit", "10xb", Watermark{}, true},
		{"empty", "", Watermark{}, true},
		{"NaN", "NaN", Watermark{}, true},
		{"infinite percentage", "Inf%", Watermark{}, true},
		{"overflow", "9999999pb", Watermark{}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseWatermark(tt.in)
			if (err != nil) != tt.wantErr {
				t.Fatalf("ParseWatermark(%q): got error %v, want error: %t", tt.in, err, tt.wantErr)
			}
			if got != tt.want {
				t.Errorf("ParseWatermark(%q): got %+v, want %+v", tt.in, got, tt.want)
			}
		})
	}
}

func TestWatermarkExceeded(t *testing.T) {
	const gb = int64(1) << 30
	tests := []struct {
		name             string
		watermark        string
		total, available int64
		want             bool
	}{
		{"ratio under", "90%", 100 * gb, 20 * gb, false},
		{"ratio at the mark is not over", "90%", 100 * gb, 10 * gb, false},
		{"ratio over", "90%", 100 * gb, 9 * gb, true},
		{"absolute under", "10gb", 100 * gb, 11 * gb, false},
		{"absolute at the mark is not over", "10gb", 100 * gb, 10 * gb, false},
		{"absolute over", "10gb", 100 * gb, 9 * gb, true},
		{"absolute ignores the ratio", "10gb", 100 * gb, 10*gb + 1, false},
		{"no disk size reported", "90%", 0, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w, err := ParseWatermark(tt.watermark)
			if err != nil {
				t.Fatal(err)
			}
			if got := w.Exceeded(tt.total, tt.available); got != tt.want {
				t.Errorf("%s with %d of %d available: got %t, want %t", tt.watermark, tt.available, tt.total, got, tt.want)
			}
		})
	}
}

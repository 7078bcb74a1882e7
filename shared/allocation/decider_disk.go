package allocation

import "github.com/shardwise/shardwise/shared/cluster"

// DeciderDisk names the disk-watermark decider.
const DeciderDisk = "disk_watermark"

// disk: the target's disk use after receiving the copy must stay under the high watermark.
type disk struct{}

func (disk) Name() string { return DeciderDisk }

func (disk) CanAllocate(v *View, c *cluster.Copy, t *cluster.Node) Verdict {
	if t.DiskTotalBytes <= 0 {
		return yes(DeciderDisk, "%s reports no disk size", t.Name)
	}
	after := v.figures(t.ID).diskUsed + c.SizeBytes
	s := v.Snap.Settings
	if s.DiskHighWatermarkFreeBytes > 0 {
		free := t.DiskTotalBytes - after
		if free < s.DiskHighWatermarkFreeBytes {
			return verdict(DeciderDisk, No, float64(free), float64(s.DiskHighWatermarkFreeBytes),
				"%s would have %d bytes free, under the high watermark of %d", t.Name, free, s.DiskHighWatermarkFreeBytes)
		}
		return yes(DeciderDisk, "%s keeps %d bytes free", t.Name, free)
	}
	wm := s.DiskHighWatermark
	if wm <= 0 {
		wm = cluster.DefaultDiskHighWatermark
	}
	ratio := float64(after) / float64(t.DiskTotalBytes)
	if ratio > wm {
		return verdict(DeciderDisk, No, ratio, wm, "%s disk would be %.1f%% used, over the high watermark %.1f%%", t.Name, ratio*100, wm*100)
	}
	return verdict(DeciderDisk, Yes, ratio, wm, "%s disk would be %.1f%% used, under %.1f%%", t.Name, ratio*100, wm*100)
}

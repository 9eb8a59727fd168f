package record

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image/jpeg"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// The WebM: the frames as a VP8 video at 2 frames a second, each frame
// shown until the next (an idle stretch is cut to maxStill), made by
// ffmpeg (Debian's package) when it is on the PATH.

// ffmpegTimeout bounds one encoding: at 2 frames a second in VP8's
// realtime mode, MaxFrames frames take seconds.
const ffmpegTimeout = 2 * time.Minute

// maxStill is the longest a frame stays on screen in the video.
const maxStill = 3 * time.Second

// webm writes frames to path as a WebM. It returns "" and nil without
// ffmpeg or without frames.
func webm(path string, frames []Frame) (string, error) {
	bin, err := exec.LookPath("ffmpeg")
	if err != nil || len(frames) == 0 {
		return "", nil
	}
	if err := WebM(context.Background(), bin, path, frames); err != nil {
		return "", err
	}
	return path, nil
}

// WebM encodes frames into a WebM at path with the ffmpeg at bin. Frames
// of another size than the first are scaled into its box.
func WebM(ctx context.Context, bin, path string, frames []Frame) error {
	if len(frames) == 0 {
		return errors.New("record: no frames to encode")
	}
	cfg, err := jpeg.DecodeConfig(bytes.NewReader(frames[0].JPEG))
	if err != nil {
		return fmt.Errorf("record: the first frame: %w", err)
	}
	w, h := cfg.Width&^1, cfg.Height&^1 // VP8 in yuv420p wants even sizes
	if w < 2 || h < 2 {
		return fmt.Errorf("record: a frame of %dx%d", cfg.Width, cfg.Height)
	}
	tmp, err := os.MkdirTemp(filepath.Dir(path), ".record-frames-*")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	// The concat demuxer's list: each frame with how long it shows.
	var list strings.Builder
	for i, f := range frames {
		name := fmt.Sprintf("%05d.jpg", i)
		if err := os.WriteFile(filepath.Join(tmp, name), f.JPEG, 0o600); err != nil {
			return err
		}
		d := FrameInterval
		if i+1 < len(frames) {
			d = min(max(frames[i+1].At.Sub(f.At), FrameInterval), maxStill)
		}
		fmt.Fprintf(&list, "file '%s'\nduration %.3f\n", name, d.Seconds())
	}
	// The last frame again: the demuxer drops the last one's duration.
	fmt.Fprintf(&list, "file '%05d.jpg'\n", len(frames)-1)
	if err := os.WriteFile(filepath.Join(tmp, "frames.txt"), []byte(list.String()), 0o600); err != nil {
		return err
	}
	out := filepath.Join(tmp, "out.webm")
	ctx, cancel := context.WithTimeout(ctx, ffmpegTimeout)
	defer cancel()
	vf := fmt.Sprintf("scale=%d:%d:force_original_aspect_ratio=decrease,pad=%d:%d:(ow-iw)/2:(oh-ih)/2,format=yuv420p", w, h, w, h)
	cmd := exec.CommandContext(ctx, bin, "-hide_banner", "-loglevel", "error", "-nostdin",
		"-f", "concat", "-safe", "0", "-i", "frames.txt",
		"-vf", vf, "-r", "2", "-c:v", "libvpx", "-deadline", "realtime", "-cpu-used", "8", "-b:v", "800k",
		"-an", "-f", "webm", out)
	cmd.Dir = tmp
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("record: ffmpeg: %w: %s", err, strings.TrimSpace(clip(stderr.String(), 500)))
	}
	if err := os.Chmod(out, 0o600); err != nil {
		return err
	}
	// A link, not a rename: an existing file of the name is not replaced.
	if err := os.Link(out, path); err != nil {
		return err
	}
	return nil
}

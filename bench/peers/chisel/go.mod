// The bench's generic reverse tunnel peer (issue #34): chisel (a TCP tunnel
// over SSH in a WebSocket), built by test/real/build.sh chisel.
module edgeadm.bench/peers/chisel

go 1.24

tool github.com/jpillora/chisel

require (
	github.com/andrew-d/go-termutil v0.0.0-20150726205930-009166a695a2 // indirect
	github.com/armon/go-socks5 v0.0.0-20160902184237-e75332964ef5 // indirect
	github.com/fsnotify/fsnotify v1.6.0 // indirect
	github.com/gorilla/websocket v1.5.0 // indirect
	github.com/jpillora/ansi v1.0.3 // indirect
	github.com/jpillora/backoff v1.0.0 // indirect
	github.com/jpillora/chisel v1.10.1 // indirect
	github.com/jpillora/requestlog v1.0.0 // indirect
	github.com/jpillora/sizestr v1.0.0 // indirect
	github.com/tomasen/realip v0.0.0-20180522021738-f0c99a92ddce // indirect
	golang.org/x/crypto v0.16.0 // indirect
	golang.org/x/net v0.14.0 // indirect
	golang.org/x/sync v0.5.0 // indirect
	golang.org/x/sys v0.15.0 // indirect
	golang.org/x/text v0.14.0 // indirect
)

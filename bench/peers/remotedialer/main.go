// A driver for Rancher's remotedialer, the tunnel library under Rancher's
// cluster agents and k3s's agent tunnel. remotedialer has no command of its
// own for this shape, so this program uses it as its own example server and
// client do, with TLS on the tunnel (wss), as Rancher deploys it:
//
//	remotedialer-peer server --listen 127.0.0.1:P --cert C --key K --forward 127.0.0.1:F --target 127.0.0.1:T
//	remotedialer-peer client --connect wss://127.0.0.1:P/connect --ca C
//
// The server accepts the client's WebSocket on /connect and listens on
// --forward; every connection accepted there is dialled through the tunnel
// to --target on the client's side (server.Dialer, as the k3s server dials
// kubelets) and the bytes are copied both ways. Only the bench uses it
// (bench/tunnel/run.ts).
package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/gorilla/websocket"
	"github.com/rancher/remotedialer"
	"github.com/sirupsen/logrus"
)

const clientID = "bench"

func main() {
	if len(os.Args) < 2 {
		log.Fatal("usage: remotedialer-peer server|client [flags]")
	}
	logrus.SetLevel(logrus.WarnLevel)
	flags := flag.NewFlagSet(os.Args[1], flag.ExitOnError)
	switch os.Args[1] {
	case "server":
		listen := flags.String("listen", "127.0.0.1:0", "tunnel listen address")
		cert := flags.String("cert", "", "TLS certificate (PEM)")
		key := flags.String("key", "", "TLS key (PEM)")
		forward := flags.String("forward", "127.0.0.1:0", "address whose connections go through the tunnel")
		target := flags.String("target", "", "address the client dials for each connection")
		_ = flags.Parse(os.Args[2:])
		serve(*listen, *cert, *key, *forward, *target)
	case "client":
		connect := flags.String("connect", "", "wss URL of the server's /connect")
		ca := flags.String("ca", "", "CA that signed the server's certificate (PEM)")
		_ = flags.Parse(os.Args[2:])
		runClient(*connect, *ca)
	default:
		log.Fatalf("unknown mode %q", os.Args[1])
	}
}

func serve(listen, cert, key, forward, target string) {
	handler := remotedialer.New(func(req *http.Request) (string, bool, error) {
		id := req.Header.Get("X-Tunnel-ID")
		return id, id == clientID, nil
	}, remotedialer.DefaultErrorWriter)
	mux := http.NewServeMux()
	mux.Handle("/connect", handler)
	tunnel, err := net.Listen("tcp", listen)
	if err != nil {
		log.Fatal(err)
	}
	fwd, err := net.Listen("tcp", forward)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("tunnel listening on %s\nforward listening on %s\n", tunnel.Addr(), fwd.Addr())
	go func() { log.Fatal(http.ServeTLS(tunnel, mux, cert, key)) }()
	dial := handler.Dialer(clientID)
	for {
		conn, err := fwd.Accept()
		if err != nil {
			log.Fatal(err)
		}
		go func() {
			defer conn.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
			remote, err := dial(ctx, "tcp", target)
			cancel()
			if err != nil {
				log.Printf("dial through the tunnel: %v", err)
				return
			}
			defer remote.Close()
			done := make(chan struct{}, 2)
			go func() { _, _ = io.Copy(remote, conn); done <- struct{}{} }()
			go func() { _, _ = io.Copy(conn, remote); done <- struct{}{} }()
			<-done
		}()
	}
}

func runClient(connect, caFile string) {
	pem, err := os.ReadFile(caFile)
	if err != nil {
		log.Fatal(err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(pem) {
		log.Fatalf("%s: no certificate", caFile)
	}
	dialer := &websocket.Dialer{TLSClientConfig: &tls.Config{RootCAs: roots}, HandshakeTimeout: 10 * time.Second}
	headers := http.Header{"X-Tunnel-ID": []string{clientID}}
	for {
		_ = remotedialer.ClientConnect(context.Background(), connect, headers, dialer,
			func(proto, address string) bool { return proto == "tcp" }, nil)
	}
}

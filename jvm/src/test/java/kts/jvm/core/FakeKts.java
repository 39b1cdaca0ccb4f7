package kts.jvm.core;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Function;

/** A stand-in for kts's token endpoints in unit tests: records each request and answers with a handler's reply. */
final class FakeKts implements AutoCloseable {
    record Request(String method, String path, String authorization, String body) {
    }

    record Reply(int status, String body, Map<String, String> headers) {
        static Reply json(int status, String body) {
            return new Reply(status, body, Map.of());
        }
    }

    final List<Request> requests = new CopyOnWriteArrayList<>();
    private final HttpServer server;
    private final AtomicInteger tokens = new AtomicInteger();
    volatile Function<Request, Reply> handler = this::tokens;
    volatile long lifetimeMs = 60_000;

    FakeKts() throws IOException {
        server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
        server.createContext("/", this::serve);
        server.start();
    }

    String url() {
        return "http://127.0.0.1:" + server.getAddress().getPort();
    }

    private void serve(HttpExchange exchange) throws IOException {
        String body = new String(exchange.getRequestBody().readAllBytes(), StandardCharsets.UTF_8);
        Request request = new Request(exchange.getRequestMethod(), exchange.getRequestURI().getPath(),
                exchange.getRequestHeaders().getFirst("Authorization"), body);
        requests.add(request);
        Reply reply = handler.apply(request);
        reply.headers().forEach((k, v) -> exchange.getResponseHeaders().add(k, v));
        byte[] bytes = reply.body().getBytes(StandardCharsets.UTF_8);
        exchange.getResponseHeaders().add("Content-Type", "application/json");
        exchange.sendResponseHeaders(reply.status(), bytes.length == 0 ? -1 : bytes.length);
        exchange.getResponseBody().write(bytes);
        exchange.close();
    }

    /** kts's token endpoints, with tokens that live {@link #lifetimeMs} and cannot be renewed past it. */
    Reply tokens(Request request) {
        long now = System.currentTimeMillis();
        if (request.path().equals("/v1/tokens")) {
            int n = tokens.incrementAndGet();
            return Reply.json(201, "{\"tokenId\": \"token-" + n + "\", \"hmac\": \"c2VjcmV0LWhtYWMt" + n
                    + "\", \"owner\": \"User:alice\", \"tokenRequester\": \"User:alice\", \"renewers\": [],"
                    + " \"issueTimestamp\": " + now + ", \"expiryTimestamp\": " + (now + lifetimeMs)
                    + ", \"maxTimestamp\": " + (now + lifetimeMs) + "}");
        }
        if (request.path().endsWith("/expire") || request.path().endsWith("/renew")) {
            String id = request.path().split("/")[3];
            return Reply.json(200, "{\"tokenId\": \"" + id + "\", \"expiryTimestamp\": " + (now + 1000) + "}");
        }
        return Reply.json(404, "{\"error\": \"NOT_FOUND\", \"message\": \"no such path\"}");
    }

    int created() {
        return tokens.get();
    }

    @Override
    public void close() {
        server.stop(0);
    }
}

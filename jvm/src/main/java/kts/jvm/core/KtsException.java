package kts.jvm.core;

/**
 * A call to kts that failed: the HTTP status (0 when kts could not be reached) and kts's error name. The message
 * names the status and kts's own error name and sentence, never a secret.
 */
public final class KtsException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    private final int status;
    private final String error;
    private final long retryAfterMs;

    public KtsException(int status, String error, String message, long retryAfterMs, Throwable cause) {
        super(message, cause);
        this.status = status;
        this.error = error;
        this.retryAfterMs = retryAfterMs;
    }

    public KtsException(int status, String error, String message) {
        this(status, error, message, -1, null);
    }

    /** The HTTP status, or 0 when no answer came (connection refused, timeout, TLS failure). */
    public int status() {
        return status;
    }

    /** kts's error name ({@code DELEGATION_TOKEN_EXPIRED}, ...), or null. */
    public String error() {
        return error;
    }

    /** The wait kts asked for with Retry-After, in ms, or -1. */
    public long retryAfterMs() {
        return retryAfterMs;
    }

    /** Whether the same call may succeed later: no answer, 408, 429 and 5xx. */
    public boolean retryable() {
        return status == 0 || status == 408 || status == 429 || status >= 500;
    }
}

package kts.jvm.core;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class JsonTest {
    @Test
    void readsKtsTokenAnswers() {
        Map<String, Object> token = Json.parseObject("{\"tokenId\": \"abc_-1\", \"renewers\": [\"User:r\"],"
                + " \"issueTimestamp\": 1700000000000, \"hmac\": \"a+b/==\", \"nested\": {\"x\": [1, 2.5, true,"
                + " null]}, \"escaped\": \"\\\"\\u00e9\\n\"}");
        assertEquals("abc_-1", token.get("tokenId"));
        assertEquals(List.of("User:r"), token.get("renewers"));
        assertEquals(1700000000000L, Json.longField(token, "issueTimestamp", 0));
        assertEquals("a+b/==", Json.stringField(token, "hmac"));
        assertEquals("\"\u00e9\n", token.get("escaped"));
    }

    @Test
    void writesRequestBodies() {
        Map<String, Object> body = new LinkedHashMap<>();
        body.put("owner", "User:\"x\"");
        body.put("renewers", List.of("User:a", "User:b"));
        body.put("maxLifetimeMs", 20000L);
        body.put("job", Map.of("framework", "spark"));
        assertEquals("{\"owner\":\"User:\\\"x\\\"\",\"renewers\":[\"User:a\",\"User:b\"],\"maxLifetimeMs\":20000,"
                + "\"job\":{\"framework\":\"spark\"}}", Json.write(body));
        assertEquals(body.get("owner"), Json.parseObject(Json.write(body)).get("owner"));
    }

    @Test
    void refusesWhatIsNotAnObjectWithoutEchoingIt() {
        for (String bad : List.of("", "[]", "{", "{\"a\":}", "{\"a\":1} x", "{\"secret-value\"", "<html>")) {
            IllegalArgumentException error = assertThrows(IllegalArgumentException.class, () -> Json.parseObject(bad));
            assertFalse(error.getMessage().contains("secret-value"), error.getMessage());
        }
    }

    @Test
    void fieldsOfTheWrongTypeAreRefused() {
        Map<String, Object> object = Json.parseObject("{\"expiryTimestamp\": \"soon\", \"tokenId\": 5}");
        assertThrows(IllegalArgumentException.class, () -> Json.longField(object, "expiryTimestamp", 0));
        assertThrows(IllegalArgumentException.class, () -> Json.stringField(object, "tokenId"));
        assertEquals(7, Json.longField(object, "absent", 7));
    }
}

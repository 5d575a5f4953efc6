"""Arrow IPC bytes walked for the bats tests, to break a copy of a file at a chosen place: the
messages of a stream (or of a file, after its magic), their flatbuffer tables (Message.fbs,
Schema.fbs) and a record batch's field nodes and buffers. Only what the tests need."""
import struct


class Ipc:
    def __init__(self, path):
        self.b = bytearray(open(path, "rb").read())

    def u32(self, p):
        return struct.unpack_from("<I", self.b, p)[0]

    def ref(self, p):
        """The table or vector an offset at p points to."""
        return p + self.u32(p)

    def field(self, t, k):
        """The position of table t's field k, 0 when it is absent."""
        vt = t - struct.unpack_from("<i", self.b, t)[0]
        at = struct.unpack_from("<H", self.b, vt + 4 + 2 * k)[0] if 4 + 2 * k < struct.unpack_from("<H", self.b, vt)[0] else 0
        return t + at if at else 0

    def walk(self):
        """(start, Message table, header type, body position, end) of each message, in order."""
        p = 8 if self.b[:6] == b"ARROW1" else 0
        while p + 8 <= len(self.b) and self.u32(p) == 0xFFFFFFFF and self.u32(p + 4):
            root = self.ref(p + 8)
            body = p + 8 + self.u32(p + 4)
            at = self.field(root, 3)
            end = body + (struct.unpack_from("<q", self.b, at)[0] if at else 0)
            yield p, root, self.b[self.field(root, 1)], body, end
            p = end

    def messages(self):
        """(Message table, header type, body position) of each message, in order."""
        for start, root, kind, body, end in self.walk():
            yield root, kind, body

    def framed(self):
        """(start, end, header type) of each message: its bytes, framing and body included."""
        for start, root, kind, body, end in self.walk():
            yield start, end, kind

    def batches(self):
        """(RecordBatch table, body position) of each record batch."""
        for root, kind, body in self.messages():
            if kind == 3:
                yield self.ref(self.field(root, 2)), body

    def schema_field(self, i):
        """Field table i of the stream's schema."""
        root = next(self.messages())[0]
        fields = self.ref(self.field(self.ref(self.field(root, 2)), 1))
        return self.ref(fields + 4 + 4 * i)

    def nodes(self, batch):
        """The position of the batch's field node i: 16 bytes, length and null count."""
        return self.ref(self.field(batch, 1)) + 4

    def buffers(self, batch):
        """The position of the batch's buffer entries: 16 bytes each, offset and length."""
        return self.ref(self.field(batch, 2)) + 4

    def put(self, fmt, pos, value):
        struct.pack_into(fmt, self.b, pos, value)
        return self

    def save(self, path):
        open(path, "wb").write(self.b)

//! Local stand-ins for the judge's providers on 127.0.0.1: an OpenAI-compatible chat
//! endpoint and a System One–style decision endpoint. Each is a tiny HTTP/1.1 server on
//! its own threads whose behaviour a test sets and changes: answer, be slow, fail with a
//! status, send garbage, or never answer. Every request is recorded (path, bearer token,
//! JSON body) so a test can assert who was asked and with what.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Value};

/// What the stand-in does with the next requests.
#[derive(Debug, Clone)]
pub enum Behaviour {
    /// Answer 200 with this JSON.
    Answer(Value),
    /// Wait, then answer 200 with this JSON.
    Slow(Duration, Value),
    /// Answer with this status and a small JSON error body.
    Status(u16),
    /// Answer 200 with a body that is not JSON.
    Garbage,
    /// Read the request and never answer (the connection stays open).
    Hang,
    /// Answer 200 with this JSON only to a request whose bearer token is `token`; 401
    /// to any other (an authenticated route pool).
    Authorized(String, Value),
}

/// One recorded request.
#[derive(Debug, Clone)]
pub struct Seen {
    pub path: String,
    pub bearer: Option<String>,
    pub body: Value,
}

#[derive(Debug)]
struct Shared {
    behaviour: Behaviour,
    seen: Vec<Seen>,
}

/// A running stand-in; its threads end with the test process.
#[derive(Debug, Clone)]
pub struct ProviderStandin {
    pub base: String,
    shared: Arc<Mutex<Shared>>,
}

impl ProviderStandin {
    /// Starts a stand-in on an ephemeral loopback port with `behaviour`.
    pub fn start(behaviour: Behaviour) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind loopback");
        let port = listener.local_addr().expect("addr").port();
        let shared = Arc::new(Mutex::new(Shared { behaviour, seen: Vec::new() }));
        let accept_shared = shared.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let shared = accept_shared.clone();
                std::thread::spawn(move || serve(stream, &shared));
            }
        });
        Self { base: format!("http://127.0.0.1:{port}/v1"), shared }
    }

    /// A decision answer with probability `p` that work is left.
    pub fn decision(p: f64) -> Behaviour {
        Behaviour::Answer(json!({"answers": {"has_unfinished_work": {"noul": p}}}))
    }

    /// A chat answer whose content is `content`.
    pub fn chat(content: &str) -> Behaviour {
        Behaviour::Answer(
            json!({"id": "c1", "object": "chat.completion", "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}]}),
        )
    }

    /// Changes what the next requests get.
    pub fn set(&self, behaviour: Behaviour) {
        self.shared.lock().expect("lock").behaviour = behaviour;
    }

    /// Every request so far.
    pub fn seen(&self) -> Vec<Seen> {
        self.shared.lock().expect("lock").seen.clone()
    }
}

fn serve(stream: TcpStream, shared: &Mutex<Shared>) {
    let _ = stream.set_read_timeout(Some(Duration::from_secs(20)));
    let mut reader = BufReader::new(match stream.try_clone() {
        Ok(s) => s,
        Err(_) => return,
    });
    let mut request_line = String::new();
    if reader.read_line(&mut request_line).unwrap_or(0) == 0 {
        return;
    }
    let path = request_line.split_whitespace().nth(1).unwrap_or("").to_owned();
    let mut length = 0usize;
    let mut bearer = None;
    loop {
        let mut header = String::new();
        if reader.read_line(&mut header).unwrap_or(0) == 0 {
            return;
        }
        let header = header.trim_end();
        if header.is_empty() {
            break;
        }
        let (name, value) = header.split_once(':').unwrap_or((header, ""));
        match name.to_ascii_lowercase().as_str() {
            "content-length" => length = value.trim().parse().unwrap_or(0),
            "authorization" => bearer = value.trim().strip_prefix("Bearer ").map(str::to_owned),
            _ => {}
        }
    }
    let mut body = vec![0u8; length];
    if reader.read_exact(&mut body).is_err() {
        return;
    }
    let body = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let behaviour = {
        let mut shared = shared.lock().expect("lock");
        let behaviour = match &shared.behaviour {
            Behaviour::Authorized(token, answer) if bearer.as_deref() == Some(token.as_str()) => Behaviour::Answer(answer.clone()),
            Behaviour::Authorized(..) => Behaviour::Status(401),
            other => other.clone(),
        };
        shared.seen.push(Seen { path, bearer, body });
        behaviour
    };
    let mut stream = stream;
    let (status, text) = match behaviour {
        Behaviour::Answer(value) => (200, value.to_string()),
        Behaviour::Slow(wait, value) => {
            std::thread::sleep(wait);
            (200, value.to_string())
        }
        Behaviour::Status(code) => (code, json!({"error": {"message": "stand-in failure"}}).to_string()),
        Behaviour::Garbage => (200, "<html>502 Bad Gateway</html>".to_owned()),
        Behaviour::Hang => {
            std::thread::sleep(Duration::from_secs(60));
            return;
        }
        Behaviour::Authorized(..) => unreachable!("resolved above"),
    };
    let response = format!(
        "HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{text}",
        text.len()
    );
    let _ = stream.write_all(response.as_bytes());
}

"""Runs google-research/bert's own TF1 programs under tensorflux, as their authors wrote
them but for the import line: modeling_test.py, optimization_test.py, tokenization_test.py
and run_classifier.py (fine-tuning on CoLA-format data, then eval and predict).

    python scripts/tf1_programs/bert.py

Needs the snapshot at $TF1_MIRROR/google-research+bert/repo (default /work/.mirror) and `six`
importable (BERT imports it; `pip install six`). run_classifier gets toy inputs made here:
a 21-word vocabulary, a 2-layer, 32-wide BERT config, CoLA-format train/dev/test files
(label 1 when the sentence has "good" or "happy") and an "init checkpoint" of randomly
initialised BERT weights written by tensorflux. Work goes to $TF1_PROGRAMS_WORK/bert.
"""

import os
import shutil
import subprocess
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MIRROR = os.environ.get("TF1_MIRROR", "/work/.mirror")
WORK = os.path.join(os.environ.get("TF1_PROGRAMS_WORK", tempfile.gettempdir()), "bert")
FILES = ["modeling.py", "optimization.py", "tokenization.py", "run_classifier.py",
         "modeling_test.py", "optimization_test.py", "tokenization_test.py"]


def export_sources(src_dir: str) -> None:
    git_dir = os.path.join(MIRROR, "google-research+bert", "repo")
    for name in FILES:
        text = subprocess.run(["git", f"--git-dir={git_dir}", "show", f"HEAD:{name}"],
                              check=True, capture_output=True, text=True).stdout
        text = text.replace("\nimport tensorflow as tf\n", "\nimport tensorflux as tf\n")
        with open(os.path.join(src_dir, name), "w") as f:
            f.write(text)


MAKE_DATA = r'''
import json, os, random, sys
import tensorflux as tf
import modeling
random.seed(0)
words = "the a cat dog ran sat good bad very film movie was is on mat happy".split()
vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + words
open("vocab.txt", "w").write("\n".join(vocab) + "\n")
cfg = {"attention_probs_dropout_prob": 0.1, "hidden_act": "gelu", "hidden_dropout_prob": 0.1,
       "hidden_size": 32, "initializer_range": 0.02, "intermediate_size": 37,
       "max_position_embeddings": 64, "num_attention_heads": 4, "num_hidden_layers": 2,
       "type_vocab_size": 2, "vocab_size": len(vocab)}
json.dump(cfg, open("bert_config.json", "w"))
os.makedirs("cola", exist_ok=True)
def sentence():
    s = random.sample(words, 5)
    return " ".join(s), int("good" in s or "happy" in s)
for split, n in (("train", 96), ("dev", 32)):
    with open(f"cola/{split}.tsv", "w") as f:
        for i in range(n):
            s, y = sentence()
            f.write(f"src{i}\t{y}\t\t{s}\n")
with open("cola/test.tsv", "w") as f:
    f.write("index\tsentence\n")
    for i in range(16):
        f.write(f"{i}\t{sentence()[0]}\n")
with tf.Graph().as_default():
    modeling.BertModel(modeling.BertConfig.from_dict(cfg), False, tf.zeros([1, 8], tf.int32))
    with tf.Session() as s:
        s.run(tf.global_variables_initializer())
        tf.train.Saver().save(s, "init/bert_model.ckpt")
'''


def main() -> int:
    shutil.rmtree(WORK, ignore_errors=True)
    os.makedirs(WORK)
    export_sources(WORK)
    env = dict(os.environ, PYTHONPATH=REPO + os.pathsep + os.environ.get("PYTHONPATH", ""),
               TF_CPP_MIN_LOG_LEVEL="2")

    def run(argv, log):
        with open(os.path.join(WORK, log), "w") as f:
            r = subprocess.run([sys.executable] + argv, cwd=WORK, env=env, stdout=f,
                               stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                               timeout=900, check=False)
        return r.returncode

    for test in ("modeling_test", "optimization_test", "tokenization_test"):
        rc = run([f"{test}.py"], f"{test}.log")
        with open(os.path.join(WORK, f"{test}.log")) as f:
            tail = [line.strip() for line in f if line.strip()][-1]
        print(f"{test:20s} rc={rc} {tail}")
    rc = run(["-c", MAKE_DATA], "make_data.log")
    if rc:
        print(f"make_data failed: see {WORK}/make_data.log")
        return 1
    rc = run(["run_classifier.py", "--task_name=cola", "--do_train=true", "--do_eval=true",
              "--do_predict=true", "--data_dir=cola", "--vocab_file=vocab.txt",
              "--bert_config_file=bert_config.json", "--init_checkpoint=init/bert_model.ckpt",
              "--max_seq_length=16", "--train_batch_size=8", "--eval_batch_size=8",
              "--predict_batch_size=8", "--learning_rate=1e-3", "--num_train_epochs=4",
              "--output_dir=out"], "run_classifier.log")
    results = os.path.join(WORK, "out", "eval_results.txt")
    summary = open(results).read().replace("\n", "; ") if os.path.exists(results) else "-"
    print(f"{'run_classifier':20s} rc={rc} {summary}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""One TF1 program that builds every streaming metric on fixed data and records, per case,
the update results of two batches, the final value and the metric's variable names.

It runs unchanged under TensorFlow (the oracle) and tensorflux; `result` maps case name to
{"updates": [...], "value": ..., "vars": [...], "scope": [...], "names": [value, update]}.
"""

PROGRAM = r'''
rs = np.random.RandomState(7)
N = 12
batches = []
for _ in range(2):
    batches.append(dict(
        lab=rs.randint(0, 2, N).astype(np.int64),
        pred=rs.randint(0, 2, N).astype(np.int64),
        score=rs.uniform(0, 1, N).astype(np.float32),
        w=rs.uniform(0, 2, N).astype(np.float32),
        y=rs.normal(size=N).astype(np.float32),
        yhat=rs.normal(size=N).astype(np.float32),
        norm=np.where(rs.uniform(size=N) < 0.2, 0.0, rs.uniform(1, 2, N)).astype(np.float32),
        cls=rs.randint(0, 4, N).astype(np.int64),
        cls_pred=rs.randint(0, 4, N).astype(np.int64),
        logits=rs.normal(size=(N, 5)).astype(np.float32),
        multi=np.where(rs.uniform(size=(N, 3)) < 0.3, -1,
                       rs.randint(0, 5, (N, 3))).astype(np.int64),
        vec=rs.normal(size=(N, 3)).astype(np.float32),
        vec2=rs.normal(size=(N, 3)).astype(np.float32),
        t=rs.normal(size=(3, 2)).astype(np.float32),
    ))
for b in batches:
    b["vec"] /= np.linalg.norm(b["vec"], axis=1, keepdims=True)
    b["vec2"] /= np.linalg.norm(b["vec2"], axis=1, keepdims=True)
ph = {k: tf.placeholder(tf.as_dtype(v.dtype),
                        [None] + list(v.shape[1:]) if k != "t" else v.shape, name=k)
      for k, v in batches[0].items()}
lab, pred, score, w = ph["lab"], ph["pred"], ph["score"], ph["w"]
M = tf.metrics
cases = {
    "accuracy": lambda: M.accuracy(lab, pred),
    "accuracy_w": lambda: M.accuracy(lab, pred, weights=w),
    "mean": lambda: M.mean(ph["y"]),
    "mean_w": lambda: M.mean(ph["y"], weights=w),
    "mean_tensor": lambda: M.mean_tensor(ph["t"]),
    "mean_tensor_w": lambda: M.mean_tensor(
        ph["t"], weights=tf.constant([[1.0, 0.5], [0.0, 2.0], [1.0, 1.0]])),
    "tp": lambda: M.true_positives(lab, pred),
    "fp_w": lambda: M.false_positives(lab, pred, weights=w),
    "tn": lambda: M.true_negatives(lab, pred),
    "fn": lambda: M.false_negatives(lab, pred),
    "precision": lambda: M.precision(lab, pred),
    "recall_w": lambda: M.recall(lab, pred, weights=w),
    "tp_thr": lambda: M.true_positives_at_thresholds(lab, score, [0.25, 0.5, 0.75]),
    "fp_thr": lambda: M.false_positives_at_thresholds(lab, score, [0.25, 0.5, 0.75]),
    "tn_thr_w": lambda: M.true_negatives_at_thresholds(lab, score, [0.3, 0.6], weights=w),
    "fn_thr": lambda: M.false_negatives_at_thresholds(lab, score, [0.3, 0.6]),
    "precision_thr": lambda: M.precision_at_thresholds(lab, score, [0.2, 0.5, 0.8]),
    "recall_thr_w": lambda: M.recall_at_thresholds(lab, score, [0.2, 0.5, 0.8], weights=w),
    "auc_roc": lambda: M.auc(lab, score),
    "auc_roc_w": lambda: M.auc(lab, score, weights=w, num_thresholds=50),
    "auc_pr": lambda: M.auc(lab, score, curve="PR"),
    "auc_pr_careful": lambda: M.auc(lab, score, curve="PR",
                                    summation_method="careful_interpolation"),
    "auc_roc_minoring": lambda: M.auc(lab, score, summation_method="minoring"),
    "auc_pr_majoring": lambda: M.auc(lab, score, curve="PR", summation_method="majoring"),
    "auc_thresholds": lambda: M.auc(lab, score, thresholds=[0.6, 0.1, 0.4]),
    "mae": lambda: M.mean_absolute_error(ph["y"], ph["yhat"]),
    "mse_w": lambda: M.mean_squared_error(ph["y"], ph["yhat"], weights=w),
    "rmse": lambda: M.root_mean_squared_error(ph["y"], ph["yhat"]),
    "mre": lambda: M.mean_relative_error(ph["y"], ph["yhat"], ph["norm"]),
    "cosine": lambda: M.mean_cosine_distance(ph["vec"], ph["vec2"], dim=1),
    "below": lambda: M.percentage_below(ph["y"], 0.3),
    "below_w": lambda: M.percentage_below(ph["y"], 0.3, weights=w),
    "mean_iou": lambda: M.mean_iou(ph["cls"], ph["cls_pred"], 4),
    "mean_iou_w": lambda: M.mean_iou(ph["cls"], ph["cls_pred"], 4, weights=w),
    "per_class": lambda: M.mean_per_class_accuracy(ph["cls"], ph["cls_pred"], 4),
    "per_class_w": lambda: M.mean_per_class_accuracy(ph["cls"], ph["cls_pred"], 4, weights=w),
    "sens_at_spec": lambda: M.sensitivity_at_specificity(lab, score, 0.6),
    "spec_at_sens": lambda: M.specificity_at_sensitivity(lab, score, 0.7, num_thresholds=20),
    "prec_at_k": lambda: M.precision_at_k(ph["cls"], ph["logits"], 2),
    "prec_at_k_multi": lambda: M.precision_at_k(ph["multi"], ph["logits"], 3),
    "prec_at_k_class": lambda: M.precision_at_k(ph["multi"], ph["logits"], 2, class_id=1),
    "prec_at_k_w": lambda: M.precision_at_k(ph["multi"], ph["logits"], 2, weights=w),
    "rec_at_k": lambda: M.recall_at_k(ph["cls"], ph["logits"], 2),
    "rec_at_k_multi": lambda: M.recall_at_k(ph["multi"], ph["logits"], 3),
    "rec_at_k_class_w": lambda: M.recall_at_k(ph["multi"], ph["logits"], 2, class_id=3,
                                              weights=w),
    "prec_top_k": lambda: M.precision_at_top_k(ph["multi"], tf.nn.top_k(ph["logits"], 2)[1]),
    "ap_at_k": lambda: M.average_precision_at_k(ph["cls"], ph["logits"], 3),
    "ap_at_k_multi_w": lambda: M.average_precision_at_k(ph["multi"], ph["logits"], 2,
                                                        weights=w),
    "sparse_prec_at_k": lambda: M.sparse_precision_at_k(ph["cls"], ph["logits"], 1),
}
built = {}
for key, make in cases.items():
    before = set(v.name for v in tf.local_variables())
    built[key] = make()
    built[key + "/vars"] = sorted(v.name for v in tf.local_variables() if v.name not in before)
result = {}
with tf.Session() as sess:
    sess.run(tf.local_variables_initializer())
    ups = {k: [] for k in cases}
    for b in batches:
        feed = {ph[k]: v for k, v in b.items()}
        for k in cases:
            ups[k].append(sess.run(built[k][1], feed))
    for k in cases:
        result[k] = {"updates": [np.asarray(u, np.float64) for u in ups[k]],
                     "value": np.asarray(sess.run(built[k][0]), np.float64),
                     "vars": [n.split("/")[-1] for n in built[k + "/vars"]],
                     "scope": sorted(set(n.split("/")[0] for n in built[k + "/vars"])),
                     "names": [built[k][0].name, built[k][1].name]}
'''
